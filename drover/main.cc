#include "drover/cli/cli.h"

int main(int argc, char** argv) { return drover::cli::Main(argc, argv); }
