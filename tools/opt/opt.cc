#include "opt_main.h"

int main(int argc, char** argv) {
  return onnxopt::tools::optMain(argc, argv);
}
