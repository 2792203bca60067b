#include "harness.h"
#include "crashreport/crashreport.h"
int main(void) { return harness_done(); }
