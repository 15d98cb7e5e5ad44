#!/usr/bin/env node
// npm's `prepare`: in a source checkout, compile the host and build the example
// tools (npm run build). In an installed copy (npm runs `prepare` for `file:`
// directory dependencies too, e.g. a project made by `toolhost init` next to an
// installed toolhost) there is nothing to build: the package ships dist/ and
// the built example tools.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
if (!existsSync(join(root, 'tsconfig.json'))) process.exit(0);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const run = spawnSync(npm, ['run', 'build'], { cwd: root, stdio: 'inherit' });
process.exit(run.status ?? 1);
