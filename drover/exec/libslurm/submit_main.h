#pragma once

// `drover-slurm-submit`: the helper of exec/slurm/submit_helper.h. Serves submit requests on
// descriptor 3 until it closes: each one's JobDescription (job_description.h) goes to
// slurm_submit_batch_job, retried as sbatch retries it while slurmctld is busy (up to 15 times,
// sleeping 1, 2, ... 15 s), and the answer is "ok JOBID" or "error MESSAGE". Listing requests
// get Slurm's jobs, a line each of the keys the executor reads (job_record.h), packed by
// slurmctld only when some job changed since the last listing if asked so.
//
// Before libslurm reads its configuration (SLURM_CONF, else /etc/slurm/slurm.conf), the helper
// checks that the file can be read: libslurm itself would retry for 60 s and then end the process
// with fatal(). Then every request gets "error cannot read the Slurm configuration ...". A
// configless cluster (no slurm.conf on this machine) must be named by SLURM_CONF_SERVER, which
// skips the check; one found only through DNS SRV records needs `--slurm-submit sbatch`.

namespace drover::exec::libslurm {

// Exit status 0 when the socket closed, 1 when reading or writing it failed, 2 on a usage error
// (any argument, or no stream socket on descriptor 3).
int SlurmSubmitMain(int argc, char** argv);

}  // namespace drover::exec::libslurm
