#!/bin/bash
# Adaptation study (#49): a linear warm-up of the learning rate (--warmup), 5-minute
# budgets on bigbuckbunny, one at a time, alone on the CPU, each next to a control run
# of the defaults of that day on the same machine; then the developers' pairs and the
# clip's layered ground truth (2026-12-07).
cd "$(dirname "$0")/../.." && source research/adaptation/study_common.sh  # run, judge
OUT=${OUT:-runs/adapt_2026-12-07_warmup}; mkdir -p $OUT
cd $OUT
run defaults
run warmup50 --warmup 50
run warmup50_lr2e-3 --warmup 50 --learning-rate 2e-3
run defaults_seed1 --seed 1
run warmup50_seed1 --warmup 50 --seed 1
judge eval defaults warmup50 warmup50_lr2e-3 defaults_seed1 warmup50_seed1
# 2: the share of layered triplets (the recipe's 0.5) at the defaults, seed 0
run layered0.25 --layered-fraction 0.25
run layered0.75 --layered-fraction 0.75
judge eval2 layered0.25 layered0.75
# 3: after the training graphs' blend became a batched matmul (12 % faster steps), the
# defaults and the warm-up again in both seeds
run matmul_defaults
run matmul_defaults_seed1 --seed 1
run matmul_warmup50 --warmup 50
run matmul_warmup50_seed1 --warmup 50 --seed 1
judge eval3 matmul_defaults matmul_defaults_seed1 matmul_warmup50 matmul_warmup50_seed1
# 4: after the layered triplets' generation became faster too (29 to 16-20 ms each), the
# defaults in both seeds
run fast_defaults
run fast_defaults_seed1 --seed 1
judge eval4 fast_defaults fast_defaults_seed1
echo "== done $(date +%T)"
