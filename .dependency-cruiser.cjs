/**
 * The layering of docs/architecture.md, checked by `npm run lint:layers` (part of `npm test`).
 * Arrows point inward: the domain imports nothing of ours; the core never imports a plugin
 * or a simulator; plugins import only the plugin contract (src/cluster) and the domain;
 * simulators speak wire protocols only and import nothing of the gateway.
 */
module.exports = {
  forbidden: [
    {
      name: 'domain-is-pure',
      comment: 'src/domain holds pure rules: no I/O, nothing of ours outside src/domain.',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { path: '^(src|plugins|simulators|test|bench)/', pathNot: ['^src/domain/'] },
    },
    {
      name: 'domain-imports-no-node-io',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'core-never-imports-plugins-or-simulators',
      comment: 'The registry loads the plugins a config names; nothing in src/ imports one.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: ['^plugins/', '^simulators/'] },
    },
    {
      name: 'plugins-import-only-the-contract',
      comment: 'A plugin depends on src/cluster and src/domain, its own folder and npm packages.',
      severity: 'error',
      from: { path: '^plugins/([^/]+)/' },
      to: { path: '^(src|plugins|simulators|test|bench)/', pathNot: ['^src/cluster/', '^src/domain/', '^plugins/$1/'] },
    },
    {
      name: 'only-rehearsal-joins-gateway-and-simulators',
      comment:
        'rehearsal/ (issue 33) runs the real engines and plugins against the simulators in a worker thread; the gateway loads it by URL, never by import.',
      severity: 'error',
      from: { path: '^(src|plugins|simulators)/' },
      to: { path: '^rehearsal/' },
    },
    {
      name: 'simulators-import-nothing-of-the-gateway',
      severity: 'error',
      from: { path: '^simulators/' },
      to: { path: '^(src|plugins|test|bench)/' },
    },
    {
      name: 'production-code-never-imports-tests',
      severity: 'error',
      from: { path: '^(src|plugins|simulators|rehearsal|bin)/' },
      to: { path: '^(test|bench)/' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      from: { path: '^(src|plugins|simulators|rehearsal)/' },
      to: { circular: true },
    },
    {
      name: 'no-folder-cycles',
      comment: 'No two folders depend on each other, directly or through others.',
      severity: 'error',
      scope: 'folder',
      from: { path: '^(src|plugins|simulators|rehearsal)/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/store/generated(-postgresql)?/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.js', '.mjs'] },
  },
};
