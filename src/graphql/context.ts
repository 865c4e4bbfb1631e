import type { ClusterBackend } from '../cluster/backend.ts';
import type { EventBus } from '../events/bus.ts';
import { createLoaders, type Loaders } from './loaders.ts';

/** What the server shares with every request. */
export interface AppServices {
  backend: ClusterBackend;
  bus: EventBus;
}

export interface GraphQLContext extends AppServices {
  loaders: Loaders;
}

export function createContext(services: AppServices): GraphQLContext {
  return { ...services, loaders: createLoaders(services.backend) };
}
