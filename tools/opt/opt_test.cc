// opt with the test-only passes registered (test-oscillate): the lit tests of the driver's cap run
// this binary; the installed opt does not carry them.
#include "opt_main.h"
#include "testing/test_passes.h"

int main(int argc, char** argv) {
  onnxopt::passes::registerTestPasses();
  return onnxopt::tools::optMain(argc, argv);
}
