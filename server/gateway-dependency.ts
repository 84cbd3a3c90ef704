/**
 * The gateway's own dependencies (Fastify; a backend's host client) are optional peers of the
 * package, so that a library user never installs a web server. The gateway imports each when it
 * needs it; one that is not installed is a `GatewayDependencyError` naming what to install.
 */

/** The gateway needs a package that is not installed; `packages` names what to install. */
export class GatewayDependencyError extends Error {
  readonly code = 'missing_dependency' as const;
  constructor(
    readonly packages: readonly string[],
    neededBy: string,
    options?: { cause?: unknown },
  ) {
    const them = packages.length > 1 ? 'they are' : 'it is';
    super(`${neededBy} needs ${packages.join(' and ')}, and ${them} not installed: npm install ${packages.join(' ')}`, options);
    this.name = 'GatewayDependencyError';
  }
}

/**
 * `load()` (a dynamic import), with a `GatewayDependencyError` when what it cannot find is one of
 * `packages`; any other failure, a missing file of this package included, is rethrown as it is.
 */
export async function importGatewayDependency<T>(load: () => Promise<T>, packages: readonly string[], neededBy: string): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    const message = String((error as { message?: unknown } | null)?.message ?? '');
    // Node names the package it could not resolve in quotes: "Cannot find package 'fastify' imported from …".
    if ((code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && packages.some((name) => message.includes(`'${name}'`))) {
      throw new GatewayDependencyError(packages, neededBy, { cause: error });
    }
    throw error;
  }
}

/** Fastify, the gateway's HTTP server. */
export function loadFastify() {
  return importGatewayDependency(() => import('fastify'), ['fastify'], 'the OJS gateway (ojs-unique serve, ojs-unique/server)');
}
