#!/bin/bash
# Adaptation study (#49): training triplets cut from the clip at its working size and at
# half of it (--scales 1,0.5, as the read-out's second pyramid level sees the clip),
# against the defaults, seeds 0 and 1; 5-minute budgets on bigbuckbunny, one at a time,
# alone on the CPU; then the developers' pairs and the clip's layered ground truth
# (2026-12-07, eleventh session). SEED1_DEFAULTS=DIR adds a seed-1 run of the defaults
# (the day before's) to the 18-pair table. Run the script of a copy of the tree
# if the package may change while it runs.
cd "$(dirname "$0")/../.." && source research/adaptation/study_common.sh  # run, judge
OUT=${OUT:-runs/adapt_2026-12-07_scales}; mkdir -p $OUT
cd $OUT
ROUNDS=${ROUNDS:-"1 2 3"}
if [[ " $ROUNDS " == *" 1 "* ]]; then
  run scales --scales 1,0.5
  run scales_seed1 --scales 1,0.5 --seed 1
  run defaults
  judge eval scales scales_seed1 defaults
  # the large-motion figures again on 18 layered pairs (of the 13 held-back frames, so
  # many repeat): the same to 0.003, the six pairs are not a noisy sample
  $PY $ROOT/research/adaptation/gt_layered.py --pairs 18 --model default= \
    --model defaults=defaults --model scales=scales --model scales_seed1=scales_seed1 \
    ${SEED1_DEFAULTS:+--model defaults_seed1=$SEED1_DEFAULTS} > gt_layered_18.md
fi
# 2: rehearsal of the model's own clips (--mix 0.25) with today's defaults, both seeds,
# on the clip's large motion (not measured before with this column)
if [[ " $ROUNDS " == *" 2 "* ]]; then
  run mix0.25 --mix 0.25
  run mix0.25_seed1 --mix 0.25 --seed 1
  judge eval2 mix0.25 mix0.25_seed1
fi
# 3: after the adaptation's weight swaps became one sess.run (a validation 3.9 s -> 1.4 s
# in a 1-minute timing), the defaults in both seeds
if [[ " $ROUNDS " == *" 3 "* ]]; then
  run load_defaults
  run load_defaults_seed1 --seed 1
  judge eval3 load_defaults load_defaults_seed1
fi
echo "== done $(date +%T)"
