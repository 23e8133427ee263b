// drover-slurm-submit: the Slurm executor's submission helper (exec/slurm/submit_helper.h), the
// one program that links libslurm. Started by the server with its socket on descriptor 3.

#include "drover/exec/libslurm/submit_main.h"

int main(int argc, char** argv) { return drover::exec::libslurm::SlurmSubmitMain(argc, argv); }
