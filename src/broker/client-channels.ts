/**
 * Commands the broker sends to a live client on its own initiative (over gRPC, as Telemetry
 * commands): the edge attaches a sink per open session stream, and the broker sends through it
 * without knowing the wire. Today the one command is the orphaned-transaction check.
 */
import type { BrokerMessage } from './message.js';

export type ClientCommand = {
  kind: 'RECOVER_ORPHANED_TRANSACTION';
  /** The half message as its producer sent it (real topic, user properties). */
  message: BrokerMessage;
  transactionId: string;
};

/** Delivers a command to one client stream; returns false if it could not be written. */
export type CommandSink = (command: ClientCommand) => boolean;

export class ClientChannels {
  private readonly sinks = new Map<string, CommandSink[]>();

  /** Register a stream of `clientId`; the returned function detaches it. */
  attach(clientId: string, sink: CommandSink): () => void {
    let list = this.sinks.get(clientId);
    if (!list) this.sinks.set(clientId, (list = []));
    list.push(sink);
    return () => {
      const l = this.sinks.get(clientId);
      if (!l) return;
      const i = l.indexOf(sink);
      if (i >= 0) l.splice(i, 1);
      if (l.length === 0) this.sinks.delete(clientId);
    };
  }

  /** Whether the client has a stream to send commands through. */
  has(clientId: string): boolean {
    return this.sinks.has(clientId);
  }

  /** Send a command through the client's newest stream (older ones if that fails). */
  send(clientId: string, command: ClientCommand): boolean {
    const list = this.sinks.get(clientId);
    if (!list) return false;
    for (let i = list.length - 1; i >= 0; i--) {
      try {
        if (list[i]!(command)) return true;
      } catch {
        // a stream closing under us: try the next
      }
    }
    return false;
  }
}
