/** Prompts shared by the router's tests. */

/** A long, hard prompt mixing a proof, code and analysis; shared with the gRPC tests. */
export const HARD_PROMPT = `Prove that for every integer n >= 1, the sum \\sum_{k=1}^{n} k^3 = (n(n+1)/2)^2, using induction, step by step.
Then implement a function in TypeScript that checks this identity for n up to 10^6 without overflow:

\`\`\`ts
function check(limit: number): boolean {
  for (let n = 1; n <= limit; n++) {
    // ...
  }
  return true;
}
\`\`\`

Analyze the time complexity of your implementation and explain why BigInt is or is not needed. Also derive the closed form of the integral of x^3 from 0 to n and compare it with the discrete sum.`;
