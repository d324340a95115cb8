// The methods of a port, listed for a remote end (workers/shared/port-channel.ts): an interface has no runtime
// list of its members, so each port names them once, and `methodsOf` fails to compile when the list leaves
// one out, or names one the port does not have.

type Missing<P, L extends readonly string[]> = Exclude<keyof P & string, L[number]>;

export function methodsOf<P extends object>() {
  return <const L extends readonly (keyof P & string)[]>(
    list: L & ([Missing<P, L>] extends [never] ? unknown : { missing: Missing<P, L> }),
  ): L => list;
}
