// The web UI's lint: the layers' boundaries, as bulletproof-react draws
// them, and the rules of hooks. A feature (src/features/<name>) imports
// the shared layers and itself, never another feature; the shared layers
// (src/components, src/lib) import no feature and not the app (src/app,
// src/main.tsx); lib imports no component; the embeddable view imports no
// feature (it takes none of the app's screens with it).
import { readdirSync } from "node:fs";
import { defineConfig } from "eslint/config";
import { createNodeResolver, importX } from "eslint-plugin-import-x";
import reactHooks from "eslint-plugin-react-hooks";
import tseslint from "typescript-eslint";

const features = readdirSync(new URL("./src/features", import.meta.url));

export default defineConfig(
  { ignores: ["dist", "src/api-types.ts"] },
  {
    files: ["src/**/*.{ts,tsx}"],
    languageOptions: { parser: tseslint.parser },
    plugins: { "import-x": importX, "react-hooks": reactHooks },
    // An import that does not resolve escapes the zones: resolve the sources' own extensions.
    settings: { "import-x/resolver-next": [createNodeResolver({ extensions: [".ts", ".tsx"] })] },
    rules: {
      "react-hooks/rules-of-hooks": "error",
      "import-x/no-unresolved": "error",
      "import-x/no-restricted-paths": [
        "error",
        {
          zones: [
            ...features.map((name) => ({ target: `./src/features/${name}`, from: "./src/features", except: [`./${name}`] })),
            { target: "./src/features", from: ["./src/app", "./src/main.tsx"] },
            { target: ["./src/components", "./src/lib"], from: ["./src/features", "./src/app", "./src/main.tsx"] },
            { target: "./src/lib", from: "./src/components" },
            { target: "./src/embed.tsx", from: ["./src/features", "./src/app"] },
          ],
        },
      ],
    },
  },
);
