import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

// React without a plugin: the JSX transform is the compiler's own.
export default defineConfig({
  base: "/",
  build: {
    outDir: "dist",
    assetsDir: "assets",
    chunkSizeWarningLimit: 1200,
    rollupOptions: {
      // The app, and the embeddable map view: a document of its own that
      // loads none of the app's screens.
      input: {
        index: fileURLToPath(new URL("index.html", import.meta.url)),
        embed: fileURLToPath(new URL("embed.html", import.meta.url)),
      },
      output: {
        // MapLibre in a chunk of its own: the app's budget is counted without it.
        manualChunks: (id) => (id.includes("node_modules/maplibre-gl") ? "maplibre" : undefined),
      },
    },
  },
  oxc: { jsx: { runtime: "automatic" } },
  server: { proxy: { "/api": "http://127.0.0.1:8080" } },
});
