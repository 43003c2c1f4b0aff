/**
 * idem's workspace packages export their TypeScript source: Next compiles them with the app
 * (`transpilePackages`), and their `./x.js` imports resolve to `./x.ts` (`extensionAlias`).
 * Installed from a registry, the packages are built JavaScript and neither line is needed.
 * @type {import('next').NextConfig}
 */
const config = {
  transpilePackages: [
    '@idem/client',
    '@idem/contract',
    '@idem/react',
    '@idem/server',
    '@idem/store-drizzle',
  ],
  // `pnpm typecheck` checks the app; `next build` does not check it again.
  typescript: { ignoreBuildErrors: true },
  webpack: (webpackConfig) => {
    webpackConfig.resolve.extensionAlias = {
      '.js': ['.ts', '.tsx', '.js'],
      '.mjs': ['.mts', '.mjs'],
    };
    // The store's `migrate` finds its SQL with `new URL('../migrations', import.meta.url)`, which
    // webpack would bundle as an asset: leave it a plain URL (migrations run by `pnpm migrate`).
    webpackConfig.module.rules.push({
      test: /[\\/]store-drizzle[\\/]/,
      parser: { url: false },
    });
    return webpackConfig;
  },
};

export default config;
