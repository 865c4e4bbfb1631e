/**
 * Runs callbacks one at a time, in call order. Admission decisions (limit, one
 * operation per node) read then write; serialising them makes them atomic in this
 * process.
 */
export class Mutex {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn);
    this.tail = result.catch(() => {});
    return result;
  }
}
