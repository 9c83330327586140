#!/usr/bin/env bash
# How the shipped adapter (logwarden/adapters/security-v1) was trained and evaluated on the borrowed
# H200. The GPU box has no network and none of logwarden's light dependencies, and one `run` call
# carries at most 64 MiB, so the work is split into calls made back to back (the box stays warm
# ~30 s between calls). This file is a recipe: the `run` calls are made with the device tool.
#
# 1. Here (CPU), prepare what travels, all under ignored folders (.mdl/, .whl/ are in .gitignore):
#    python scripts/device_prepare.py          # GGUF slices → .mdl/c00..c10 (46 MB each, sha256 checked),
#                                              # dataset (4,400 windows, seed 7) → .mdl/data/*.jsonl.gz,
#                                              # sample_logs prompts recorded by the real pipeline → .mdl/data/
#    pip download ... -d .mdl/w9 bitsandbytes==0.50.2 xgrammar==0.2.9 gguf==0.19.0 pydantic==2.13.4 \
#        pydantic_core==2.46.4 typing-inspection==0.4.2 annotated-types==0.7.0 apache-tvm-ffi==0.1.15.post2
#    (the device README's platform flags; bitsandbytes is 43 MB, the rest ~7 MB)
#
# 2. Device calls, one slice each (NN = 00..10), written at its offset so a repeated call is harmless:
#    run carry=[".mdl/cNN"]  command:
#      mkdir -p /root/m && dd if=.mdl/cNN of=/root/m/q.gguf bs=500000 seek=$((10#NN*92)) conv=notrunc status=none
#
# 3. Then one call carrying the wheels (.mdl/w9: bitsandbytes slimmed to its CUDA 13 library, xgrammar,
#    pydantic, gguf...) and the data: it converts the GGUF, trains, and answers the 522 prompts with the base
#    model and with the new adapter (441 s in session 4). Session 4's command:
#    run carry=[".mdl/w9", ".mdl/data"]  timeout_s=600  command:
set -euo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .mdl/w9/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
echo "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32  /root/m/q.gguf" | sha256sum -c -
python3 scripts/device_job.py --gguf /root/m/q.gguf --work /root/m --data .mdl/data --out "$OUT" --stage all \
    --configs base,adapter --epochs 3 --rank 12 --batch 16 --lr 2e-4 --max-len 1024 --max-batch 128 --val-prompts 440 \
    > "$OUT/job.log" 2>&1
#
# 4. Back here: copy $OUT/adapter/{adapter_model.safetensors,adapter_config.json,training.json} to
#    logwarden/adapters/security-v1/ (base_model_name_or_path "embedded"; update MODEL_CARD.md), put both
#    answers_*.jsonl in one folder and score rules-only, base and adapter in one run:
#    PYTHONPATH=. python scripts/device_score.py --results <folder> --val-limit 440
#
# Evaluation only (the shipped adapter, no training): the 11 slice calls, then step 3's command with
# --stage generate --configs base,adapter --adapter logwarden/adapters/security-v1 (no --epochs ...).
