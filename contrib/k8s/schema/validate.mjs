// SPDX-License-Identifier: Apache-2.0
// The manifests of contrib/k8s against Kubernetes' own schemas, offline:
// types, required fields, enums and formats of every object (npm's
// kubernetes-models: the API's OpenAPI definitions compiled to validators),
// and no field the API does not know (the schemas allow any; the field
// lists of @kubernetes/client-node's models, as `kubectl apply
// --validate=strict` would refuse them), each document by its apiVersion
// and kind.  A kind with no schema there (a CRD such as kubeflow.org's
// MPIJob) is listed, not passed.
//   node contrib/k8s/schema/validate.mjs FILE...
// Prints one line per invalid document and a summary; exit 1 if any.
import { readFileSync } from "node:fs";

const YAML = await import("yaml");
const models = await import("@kubernetes/client-node");

// The paths under obj that the model `type` has no field for.
function unknownFields(obj, type, path, out) {
  if (obj === null || typeof obj !== "object") return;
  let m = /^Array<(.+)>$/.exec(type);
  if (m) {
    if (Array.isArray(obj)) obj.forEach((x, i) => unknownFields(x, m[1], `${path}/${i}`, out));
    return;
  }
  m = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (m) {
    for (const k of Object.keys(obj)) unknownFields(obj[k], m[1], `${path}/${k}`, out);
    return;
  }
  const cls = models[type];
  if (!cls || typeof cls.getAttributeTypeMap !== "function") return; // a scalar, IntOrString, any
  const fields = new Map(cls.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
  for (const k of Object.keys(obj)) {
    if (!fields.has(k)) out.push(`${path}/${k}`);
    else unknownFields(obj[k], fields.get(k), `${path}/${k}`, out);
  }
}
let valid = 0;
let invalid = 0;
const noSchema = [];
for (const file of process.argv.slice(2)) {
  const docs = YAML.parseAllDocuments(readFileSync(file, "utf8"));
  for (const doc of docs) {
    if (doc.errors.length) {
      console.log(`${file}: YAML: ${doc.errors[0].message.split("\n")[0]}`);
      invalid++;
      continue;
    }
    const o = doc.toJS();
    if (o === null || o === undefined) continue;
    const where = `${file}: ${o.kind} ${o.metadata?.name ?? "?"}`;
    if (typeof o.apiVersion !== "string" || typeof o.kind !== "string" || !/^[A-Za-z0-9]+$/.test(o.kind)) {
      console.log(`${where}: apiVersion and kind: strings vs ${JSON.stringify([o.apiVersion, o.kind])}`);
      invalid++;
      continue;
    }
    const [group, version] = o.apiVersion.includes("/") ? o.apiVersion.split("/") : [null, o.apiVersion];
    let Model;
    try {
      Model = (await import(`kubernetes-models/${group ? `${group}/` : ""}${version}/${o.kind}`))[o.kind];
    } catch {
      noSchema.push(`${o.kind} (${o.apiVersion})`);
      continue;
    }
    try {
      new Model(o).validate();
    } catch (e) {
      console.log(`${where}: ${String(e.message).split("\n")[0]}`);
      invalid++;
      continue;
    }
    const cls = `${version.charAt(0).toUpperCase()}${version.slice(1)}${o.kind}`;
    if (typeof models[cls]?.getAttributeTypeMap !== "function") {
      console.log(`${where}: no field list for ${cls}`);
      invalid++;
      continue;
    }
    const unknown = [];
    unknownFields(o, cls, "", unknown);
    if (unknown.length) {
      console.log(`${where}: unknown field ${unknown.join(", ")}`);
      invalid++;
      continue;
    }
    valid++;
  }
}
for (const k of noSchema) console.log(`no schema: ${k}`);
console.log(`manifests: ${valid} valid, ${invalid} invalid, ${noSchema.length} without a schema`);
process.exit(invalid ? 1 : 0);
