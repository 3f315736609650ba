// Validates objects against the Kubernetes OpenAPI schemas of their apiVersion and kind, strictly:
// a wrong type or a missing required field fails, and so does a field the schema does not know
// (a misspelt `readinesProbe` would otherwise be dropped by the API server without a word).
//
// The schemas are kubernetes-models' (the core API) and its sibling packages' for the CRDs we
// render: @kubernetes-models/prometheus-operator, /gateway-api and /cert-manager. Their validators
// are compiled ahead of time without `additionalProperties: false`, so unknown fields are found
// here: the validator reads every property its schema declares (present or not), and an object
// whose declared properties it read but which holds a key it never read holds a field the schema
// does not know. Objects whose keys the validator never looks at (free-form maps of the schema,
// `x-kubernetes-preserve-unknown-fields`) are left as the schema leaves them.

/** The npm module holding the model of a group's kinds, by API group. */
const MODEL_PACKAGES = {
  'monitoring.coreos.com': '@kubernetes-models/prometheus-operator',
  'gateway.networking.k8s.io': '@kubernetes-models/gateway-api',
  'cert-manager.io': '@kubernetes-models/cert-manager',
};

/** The module path of the model of an apiVersion and kind. */
function modelModule(apiVersion, kind) {
  const [group, version] = String(apiVersion ?? '').includes('/') ? apiVersion.split('/') : ['', apiVersion];
  const pack = MODEL_PACKAGES[group];
  if (pack) return `${pack}/${group}/${version}/${kind}`;
  return `kubernetes-models/${group ? `${group}/` : ''}${version}/${kind}`;
}

/** Wraps a value so that every property read on it, or on anything below it, is recorded in `reads`. */
function tracked(value, reads) {
  if (!value || typeof value !== 'object') return value;
  if (!reads.has(value)) reads.set(value, new Set());
  const seen = reads.get(value);
  return new Proxy(value, {
    get(target, key) {
      if (typeof key === 'string') seen.add(key);
      return tracked(Reflect.get(target, key), reads);
    },
  });
}

/** The paths of the fields below `value` that the validator never read where it read their siblings' names. */
function unknownFields(value, reads, path = '') {
  if (!value || typeof value !== 'object') return [];
  if (Array.isArray(value)) return value.flatMap((item, index) => unknownFields(item, reads, `${path}[${index}]`));
  const seen = reads.get(value);
  const found = [];
  for (const [key, child] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key;
    if (seen && seen.size > 0 && !seen.has(key)) found.push(at);
    else found.push(...unknownFields(child, reads, at));
  }
  return found;
}

/**
 * The schema problems of one object: no schema for its kind, a schema violation, or unknown fields.
 * @param {object} manifest one Kubernetes object
 * @returns {Promise<string[]>}
 */
export async function objectSchemaProblems(manifest) {
  let Model;
  try {
    Model = Object.values(await import(modelModule(manifest.apiVersion, manifest.kind))).find((value) => typeof value === 'function');
  } catch {
    return [`no Kubernetes schema for ${manifest.apiVersion} ${manifest.kind}`];
  }
  if (!Model) return [`no Kubernetes schema for ${manifest.apiVersion} ${manifest.kind}`];
  const reads = new Map();
  try {
    // The model's validate() runs the schema's compiled validator on `this`; run it on the object itself.
    Model.prototype.validate.call(tracked(manifest, reads));
  } catch (error) {
    return [String(error.message).split('\n')[0]];
  }
  return unknownFields(manifest, reads).map((path) => `unknown field ${path}`);
}

/**
 * The schema problems of a list of objects, each message prefixed by the label, kind and name; an
 * object of a kind no schema package covers is a problem too, so that nothing goes unvalidated.
 * @param {string} label where the objects come from (a file, an overlay)
 * @param {object[]} objects the objects; a `source` property (where it was read) is ignored
 * @returns {Promise<string[]>}
 */
export async function schemaProblems(label, objects) {
  const problems = [];
  for (const object of objects) {
    if (!object || typeof object !== 'object') continue;
    const { source: _source, ...manifest } = object;
    for (const problem of await objectSchemaProblems(manifest)) problems.push(`${label}: ${manifest.kind} ${manifest.metadata?.name ?? '?'}: ${problem}`);
  }
  return problems;
}
