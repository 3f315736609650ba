/** cluster-key-slot (the slot function ioredis itself uses) ships no types: its one export. */
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot (0-16383) of a key, honouring its {hash tag}. */
  export default function calculateSlot(key: string | Buffer): number;
}
