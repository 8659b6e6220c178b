# The guard on the study clip: two 5-minute adaptations (defaults seed 0; --mix 0.25 seed 1,
# which lost 0.020 acc@5 on the clip's large motion on 2026-12-07), their guard lines, then
# the clip's layered pairs (gt_layered.py) for both; --guard-tolerance 1: the guard runs
# and logs its shares but always passes, so both models are written.
source research/adaptation/study_common.sh  # from the repository root; outputs here
run guard_defaults_s0 --seed 0 --guard-tolerance 1
run guard_mix0.25_s1 --seed 1 --mix 0.25 --guard-tolerance 1
grep -h "^guard:" guard_*.log
$PY $ROOT/research/adaptation/gt_layered.py --model default= --model s0=guard_defaults_s0 --model mix_s1=guard_mix0.25_s1 > gt_layered_guard.md 2> gt_layered_guard.err
