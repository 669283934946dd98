// Presence through Redis (docs/scale-out.md, "Presence"): separate
// Switchboard processes on one real redis-server. The scenarios, shared
// with a Redis Cluster, are in presence-scenarios.mjs.
import test from 'node:test';
import { redis } from './engines.mjs';
import * as scenarios from './presence-scenarios.mjs';

let runs = 0;
const engine = {
  ...redis,
  freshPrefix: () => `sbpres${process.pid}x${++runs}:`,
  redisName: (prefix, channel) => `${prefix}${channel}`,
};

test('members on every node are listed with their info; joins and leaves reach subscribers of $presence: on every node, also when a node dies', (t) => scenarios.membersAndEvents(t, engine));

test('a node that closes gracefully removes its members at once; info set after joining shows in the list', (t) => scenarios.gracefulLeave(t, engine));

test("a killed node's members leave once its node key expires (nodeTtl), long before their own presenceTtl", (t) => scenarios.killedNodeEvicted(t, engine));
