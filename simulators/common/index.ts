export { wallClock, Waits, type SimClock } from './clock.ts';
export { RequestLog, REQUESTS_PATH, type LoggedRequest } from './request-log.ts';
