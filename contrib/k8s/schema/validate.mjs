// SPDX-License-Identifier: Apache-2.0
// The manifests of contrib/k8s against Kubernetes' own schemas (the npm
// package kubernetes-models: the API's OpenAPI definitions compiled to
// validators), offline: types, required fields, enums and formats of every
// object, each document by its apiVersion and kind.  A kind the package has
// no schema for (a CRD such as kubeflow.org's MPIJob) is listed, not passed.
//   node contrib/k8s/schema/validate.mjs FILE...
// Prints one line per invalid document and a summary; exit 1 if any.
import { readFileSync } from "node:fs";

const YAML = await import("yaml");
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
      valid++;
    } catch (e) {
      console.log(`${where}: ${String(e.message).split("\n")[0]}`);
      invalid++;
    }
  }
}
for (const k of noSchema) console.log(`no schema: ${k}`);
console.log(`manifests: ${valid} valid, ${invalid} invalid, ${noSchema.length} without a schema`);
process.exit(invalid ? 1 : 0);
