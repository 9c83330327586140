"""CPU spot check: the same few windows answered by the embedded model with and without security-v1.

4 sample_logs prompts (recorded by scripts/device_prepare.py) + the first 4 held-out generated
windows, fp32 on CPU through the real LocalEngine and JSON grammar (~8 min per config on 2 cores).
"""
import json, time, sys
from logwarden.app.config import get_settings
from logwarden.engine.load import load_engine
from logwarden.engine.api import Request
from logwarden.schemas import assessment_json_schema
sample=[json.loads(l) for l in open(".mdl/data/prompts_suspicious.jsonl")]
val=[json.loads(l) for l in open(".mdl/ds/val.jsonl")]
picks = [sample[i] for i in (0, 20, 40, 60)] + [{"system": v["system"], "user": v["user"], "truth": v["assistant"]} for v in val[:4]]
out = {}
for name, ad in (("adapter", None), ("base", "none")):
    e = load_engine(model="embedded", adapter=ad, quant="fp32", threads=2, max_batch=8,
                    cache_dir=get_settings().model_cache)
    t = time.time()
    g = e.generate([Request(p["system"], p["user"]) for p in picks], schema=assessment_json_schema(), max_new_tokens=320)
    out[name] = [{"text": x.text, "finished": x.finished} for x in g]
    print(name, round(time.time() - t, 1), "s", flush=True)
    for p, x in zip(picks, g):
        print(" ", x.finished, x.text[:260].replace("\n", " "), "| truth:", json.loads(p["truth"])["category"] if "truth" in p else "-", flush=True)
json.dump(out, open(".mdl/cpu_spot_check.json", "w"))
