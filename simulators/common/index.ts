export { wallClock, Waits, type SimClock } from './clock.ts';
export { RequestLog, type LoggedRequest } from './request-log.ts';
