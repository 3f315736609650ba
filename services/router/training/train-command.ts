/**
 * `pnpm --filter @gateway/router train [data.jsonl] [model.json]`: trains the `auto` scorer on
 * the routing data (default: training/data/train.jsonl.gz, shipped in the repository), prints
 * APGR and CPT(50%) on its held-out validation split beside random routing and prompt length, and
 * writes the model file the router ships (default: services/router/model/auto-router.json).
 */
import { writeFileSync } from 'node:fs';
import { DEFAULT_MODEL_PATH } from '../src/auto-router-model.js';
import { DEFAULT_DATA_PATH, readRoutingRows, serializeModel } from './routing-data.js';
import { trainAutoRouter } from './train-auto-router.js';

const [dataPath = DEFAULT_DATA_PATH, modelPath = DEFAULT_MODEL_PATH] = process.argv.slice(2);
const started = performance.now();
const rows = readRoutingRows(dataPath);
const { model, report, trainCount, validationCount } = trainAutoRouter(rows);
const text = serializeModel(model);
writeFileSync(modelPath, text);
const percent = (value: number) => `${(value * 100).toFixed(1)}%`;
console.log(`Trained on ${trainCount} prompts, validated on ${validationCount} held out (${((performance.now() - started) / 1000).toFixed(1)} s).\n`);
console.log('| split | router | APGR | CPT(50%) | prompts |');
console.log('| --- | --- | --- | --- | --- |');
for (const line of report) console.log(`| ${line.split} | ${line.router} | ${line.apgr.toFixed(3)} | ${percent(line.cpt50)} | ${line.count} |`);
console.log(`\nWrote ${modelPath} (${(Buffer.byteLength(text) / 1024).toFixed(0)} KiB).`);
