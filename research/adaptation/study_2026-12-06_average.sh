#!/bin/bash
# Adaptation study (#49): the weights' moving average (--average), 5-minute budgets on
# bigbuckbunny, one at a time, alone on the CPU; after each round the developers' pairs
# and layered ground truth from the clip's held-back frames. Four rounds, run in this
# order on 2026-12-06 (each round's choice followed the one before it). That evening the
# layered pairs were scored in other groupings of the same models (the scores do not depend
# on the grouping); their outputs are gathered in gt_layered_2026-12-06_average.md.
cd "$(dirname "$0")/../.." && source research/adaptation/study_common.sh  # run, judge
OUT=${OUT:-runs/adapt_2026-12-06_average}; mkdir -p $OUT
cd $OUT
# 1: the old defaults, the average at lr 3e-4 and at lr 1e-3
run lr3e-4_const --learning-rate 3e-4
run lr3e-4_const_avg0.98 --learning-rate 3e-4 --average 0.98
run lr1e-3_decay_avg0.98 --learning-rate 1e-3 --decay --average 0.98
run lr1e-3_const_avg0.98 --learning-rate 1e-3 --average 0.98
judge eval lr3e-4_const lr3e-4_const_avg0.98 lr1e-3_decay_avg0.98 lr1e-3_const_avg0.98
# 2: lr 1e-3 without the average (the control), another seed, the average 0.99
run lr1e-3_const --learning-rate 1e-3
run lr1e-3_const_avg0.98_seed1 --learning-rate 1e-3 --average 0.98 --seed 1
run lr1e-3_const_avg0.99 --learning-rate 1e-3 --average 0.99
judge eval2 lr1e-3_const lr1e-3_const_avg0.98_seed1 lr1e-3_const_avg0.99
# 3: the average 0.99 with the other seed
run lr1e-3_const_avg0.99_seed1 --learning-rate 1e-3 --average 0.99 --seed 1
judge eval3 lr1e-3_const_avg0.99_seed1
# 4: the average 0.99 at lower learning rates (seed 0, whose runs lost on large motion)
run lr3e-4_const_avg0.99 --learning-rate 3e-4 --average 0.99
run lr5e-4_const_avg0.99 --learning-rate 5e-4 --average 0.99
judge eval4 lr3e-4_const_avg0.99 lr5e-4_const_avg0.99
echo "== done $(date +%T)"
