// Tests of bench/ort/common.mjs's flag reader as every bench/ort script uses it: --help prints
// the script's usage and its flags, an unknown flag or a flag without its value stops the script.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ort = path.join(path.dirname(fileURLToPath(import.meta.url)), "../../bench/ort");
const run = (script, ...args) => spawnSync(process.execPath, [path.join(ort, script), ...args], { encoding: "utf8" });

for (const script of ["speed.mjs", "compare.mjs", "memory.mjs", "first_output.mjs", "split.mjs"]) {
  for (const flag of ["--help", "-h"]) {
    const help = run(script, flag);
    assert.equal(help.status, 0, `${script} ${flag}: ${help.stderr}`);
    assert.match(help.stdout, /Usage: node bench\/ort\//, `${script} ${flag} prints no usage`);
    assert.match(help.stdout, /Flags and defaults:\n {2}--cleave /, `${script} ${flag} lists no flags`);
  }
}

const unknown = run("speed.mjs", "--no-such-flag");
assert.notEqual(unknown.status, 0);
assert.match(unknown.stderr, /unknown flag --no-such-flag; known: cleave, models/);
const bare = run("speed.mjs", "--rounds");
assert.notEqual(bare.status, 0);
assert.match(bare.stderr, /--rounds needs a value/);
console.log("flags: ok");
