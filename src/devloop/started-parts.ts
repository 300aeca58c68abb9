/**
 * The parts a dev loop started (control plane, queues, runners, forwarder, …), kept in start
 * order so they stop in reverse.
 *
 * Guarantees: `stopParts` stops every part even when one fails to stop (that one is reported on
 * `write`, naming it), leaves the list empty, and a second call does nothing.
 */
import { errorMessage } from '../observability/log.ts';

/** One started part: a name for messages and how to stop it. */
export interface Stoppable {
  readonly name: string;
  stop(): Promise<unknown>;
}

/** Stops the parts in reverse order of start; a part that fails to stop is reported and the rest still stop. */
export async function stopParts(started: Stoppable[], write: (line: string) => void): Promise<void> {
  for (const part of started.reverse()) {
    try {
      await part.stop();
    } catch (err) {
      write(`could not stop ${part.name} cleanly: ${errorMessage(err)}`);
    }
  }
  started.length = 0;
}
