/** A ConfigMap volume as a pod sees it, for the tests of files reloaded when Kubernetes updates them. */
import { mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A ConfigMap volume with one key. */
export interface ConfigMapVolume {
  /** The key's path, as the pod reads it. */
  readonly path: string;
  /** Writes the key's new text as the kubelet does. */
  update(content: string): void;
}

/**
 * A directory `root` (made if missing) laid out as the kubelet mounts a ConfigMap with one key:
 * `<key>` -> `..data/<key>`, `..data` -> a timestamped directory. `update` writes the new text to
 * a new timestamped directory and renames a new `..data` symlink over the old one, as the kubelet
 * does; the key's file itself is never written.
 */
export function configMapVolume(root: string, key: string, text: string): ConfigMapVolume {
  mkdirSync(root, { recursive: true });
  let generation = 0;
  const write = (content: string) => {
    generation += 1;
    const name = `..2026_11_26_12_00_${String(generation).padStart(2, '0')}.${process.pid}`;
    mkdirSync(join(root, name));
    writeFileSync(join(root, name, key), content);
    return name;
  };
  symlinkSync(write(text), join(root, '..data'));
  symlinkSync(join('..data', key), join(root, key));
  return {
    path: join(root, key),
    update(content: string): void {
      const name = write(content);
      symlinkSync(name, join(root, '..data_tmp'));
      renameSync(join(root, '..data_tmp'), join(root, '..data'));
    },
  };
}
