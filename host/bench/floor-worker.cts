/**
 * The floor's piscina task: returns its input, so a call costs only piscina's
 * dispatch and the structured clone both ways. CommonJS, like the sandbox's
 * worker bootstrap, so both pools load their task the same way.
 */
export default function echo<T>(input: T): T {
  return input;
}
