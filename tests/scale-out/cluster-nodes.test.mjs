// Nodes and direct sends on a Redis Cluster (docs/scale-out.md, "Nodes"):
// the scenarios of nodes.test.mjs (node-scenarios.mjs) on three
// Switchboard processes and a real three-master cluster, where the node
// keys and channels live in one slot, `<prefix>{\xFF}...`, at its master.
import test, { after } from 'node:test';
import * as scenarios from './node-scenarios.mjs';
import { cluster, stopCluster } from './cluster-engine.mjs';

after(stopCluster);

const slow = { timeout: 60_000 };

test('cluster: three nodes claim distinct numbers, know each other, and their connection ids carry them', slow, (t) => scenarios.distinctNumbers(t, cluster));

test('cluster: send, subscribe, unsubscribe and close by id reach connections on other nodes; a send and a publish on the nodes\' master keep their order', slow, (t) => scenarios.directOperations(t, cluster));

test('cluster: publishTo across nodes, each recipient once', slow, (t) => scenarios.publishToAcrossNodes(t, cluster));

test('cluster: per-user addressing', slow, (t) => scenarios.perUserAddressing(t, cluster));

test('cluster: a node that leaves gracefully frees its number; a killed one expires', slow, (t) => scenarios.leaveAndExpiry(t, cluster));
