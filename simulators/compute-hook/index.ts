export {
  ComputeHookSim,
  type ComputeHookSimOptions,
  type HookAnswer,
  NOTIFICATIONS_PATH,
  type NotifyAttachBody,
  type NotifyShard,
  type RecordedNotification,
} from './simulator.ts';
