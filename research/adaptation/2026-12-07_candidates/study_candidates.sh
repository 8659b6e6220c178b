# The guard choosing among the best validations (guard_candidates, default 3) on the study
# clip: the two 5-minute adaptations of 2026-12-07_guard/ again, now with a tolerance each
# of them failed there (--mix 0.25 seed 1 lost 0.010: tolerance 0.005; the defaults seed 0
# lost 0.0045: tolerance 0), so the best by PSNR is refused and the next ones are tried.
source research/adaptation/study_common.sh  # from the repository root; outputs here
run cand_mix0.25_s1 --seed 1 --mix 0.25 --guard-tolerance 0.005
run cand_defaults_s0 --seed 0 --guard-tolerance 0
grep -H "^guard" cand_*.log
