// Lint rules for the whole repository (issue 10). The type checker (tsc) already refuses
// unused locals and parameters; ESLint adds the mistakes it does not see.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', 'dist/', 'src/store/generated/', 'src/store/generated-postgresql/', 'src/store/prisma-postgresql/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
  {
    // Tests read untyped GraphQL and Kubernetes JSON; `any` there keeps assertions readable.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly' } },
    rules: {
      // tsc's noUnusedLocals/noUnusedParameters is the one home for this check.
      '@typescript-eslint/no-unused-vars': 'off',
    },
  },
);
