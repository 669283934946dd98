/**
 * Entry point of a worker thread: loads the app module, reports its routes,
 * then attaches to the native server and runs the dispatcher.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { App, loadApp } from '../app.js';
import { native } from '../native.js';
import { Dispatcher } from '../internal/dispatcher.js';
import { type FromWorker, type ToWorker, serializeError } from '../internal/worker-messages.js';
import type { RpcWorkerOptions } from '../options.js';
import type { BrokerSummary } from '../http/redis-store.js';

interface WorkerData {
  app: string;
  index: number;
  rpc: RpcWorkerOptions;
  compressThreshold: number;
  broker: BrokerSummary | undefined;
}

const port = parentPort!;
const { app: specifier, index, rpc, compressThreshold, broker } = workerData as WorkerData;
const post = (message: FromWorker) => port.postMessage(message);

const app = new App(index);
app.rpc.limits = rpc;
app.compressThreshold = compressThreshold;
app.broker = broker;
try {
  await loadApp(app, specifier);
  const httpRoutes = app.compileHttp();
  post({ type: 'routes', routes: app.routes.map((r) => r.native), staticRoutes: app.staticRoutes, staticDirs: app.staticDirs, httpRoutes });
} catch (error) {
  post({ type: 'load-error', error: serializeError(error) });
  port.close();
}

let dispatcher: Dispatcher | undefined;
let handle: ReturnType<typeof native.ServerHandle.open> | undefined;

port.on('message', (message: ToWorker) => {
  switch (message.type) {
    case 'attach': {
      handle = native.ServerHandle.open(message.serverId);
      app.attach(handle);
      const d = new Dispatcher(app, handle, index, (failure) =>
        post({
          type: 'handler-error',
          handler: failure.handler,
          connection: failure.connection,
          error: serializeError(failure.error),
        }),
      );
      dispatcher = d;
      handle.attachWorker(index, () => d.wake());
      post({ type: 'attached' });
      break;
    }
    case 'ping':
      post({ type: 'pong', seq: message.seq });
      break;
    case 'final-drain':
      dispatcher?.drainAll();
      handle?.detachWorker(index);
      post({ type: 'drained' });
      port.close();
      break;
  }
});
