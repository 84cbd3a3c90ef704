/**
 * The public OJS conformance suites against the gateway on Graphile Worker, one server for the
 * file, on a salted pair of schemas (`gwt_<salt>_gateway_…`); the reset truncates their job tables.
 */
import { RUN_SALT } from '../run-salt.js';
import { databaseUrl } from '../conformance/subjects/graphile-worker.js';
import { describeConformance } from './gateway-conformance.js';
import { createGraphileWorkerGatewayStore } from '../../server/graphile-worker-gateway-store.js';

describeConformance('graphile-worker', async () =>
  createGraphileWorkerGatewayStore({
    databaseUrl: databaseUrl(),
    graphileSchema: `gwt_${RUN_SALT}_gateway_gw`,
    uniqueSchema: `gwt_${RUN_SALT}_gateway_ou`,
  }),
);
