#!/bin/bash
# jaxsched schedule on a Slurm cluster: one process per GPU, one global mesh (docs/clusters.md).
#   sbatch examples/slurm_schedule.sh             # extra arguments go to jaxsched schedule:
#   sbatch examples/slurm_schedule.sh --resume    # finish a stopped run
#SBATCH --job-name=jaxsched
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=4         # one process per GPU
#SBATCH --gpus-per-node=4           # every process sees the node's GPUs; JAX takes its own
#SBATCH --cpus-per-task=8
#SBATCH --time=02:00:00
#SBATCH --output=jaxsched-%j.log

srun jaxsched schedule regions.jsonl --distributed --out results.jsonl --peer-timeout 120 "$@"
