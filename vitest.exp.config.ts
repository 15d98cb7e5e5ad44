import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.ts';
export default mergeConfig(base, defineConfig({ test: { setupFiles: [process.env.CPU_SETUP ?? '/tmp/cpu-setup.ts'], execArgv: (process.env.EXP_ARGV ?? '').split(' ').filter(Boolean) } }));
