export {
  ComputeHookSim,
  type ComputeHookSimOptions,
  type HookAnswer,
  type NotifyAttachBody,
  type NotifyShard,
  type RecordedNotification,
} from './simulator.ts';
