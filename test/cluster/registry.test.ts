import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../support/virtual-clock.ts';
import { ConfigError } from '../../src/config/errors.ts';
import { createBackendFromConfig } from '../../src/config/plugin-registry.ts';

const context = { clock: new VirtualClock(), configDir: process.cwd(), log: { info() {}, warn() {} } };

describe('plugin registry', () => {
  it('loads the plugin a config names', async () => {
    const backend = await createBackendFromConfig([{ name: 'fake', options: { topology: 'demo' } }], context);
    expect(backend.name).toBe('fake');
    expect((await backend.listNodes()).length).toBe(4);
    await backend.close();
  });

  it('refuses an unknown plugin, naming the key', async () => {
    const attempt = createBackendFromConfig(
      [
        { name: 'fake', options: {} },
        { name: 'nosuch', options: {} },
      ],
      context,
    );
    await expect(attempt).rejects.toThrow(ConfigError);
    await expect(createBackendFromConfig([{ name: 'nosuch', options: {} }], context)).rejects.toThrow(/plugins\[0\]\.name: unknown plugin "nosuch"/);
  });

  it('refuses unknown plugin options, naming the key', async () => {
    await expect(createBackendFromConfig([{ name: 'fake', options: { topolgy: 'demo' } }], context)).rejects.toThrow(
      /plugins\[0\]\.options\.topolgy: unknown key/,
    );
  });

  it('refuses two plugins that serve the same kind of workload', async () => {
    const twice = [
      { name: 'fake', options: { topology: 'demo' } },
      { name: 'fake', options: { topology: 'demo' } },
    ];
    await expect(createBackendFromConfig(twice, context)).rejects.toThrow(ConfigError);
    await expect(createBackendFromConfig(twice, context)).rejects.toThrow(/more than one plugin serves VMs \(fake, fake\)/);
  });
});
