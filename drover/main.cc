// `drover`: the client's verbs; the others run drover-full beside it (drover/cli/cli.h).

#include "drover/cli/cli.h"

int main(int argc, char** argv) {
  return drover::cli::Main(argc, argv, drover::cli::ForwardToFull, nullptr);
}
