/**
 * The benchmark's floor: a piscina task that does nothing but return its
 * input, so a call measures only piscina's dispatch and the structured clone
 * both ways.
 */
export default function echo<T>(input: T): T {
  return input;
}
