// Probe: which cuFFT LTO callback plans does this machine's cuFFT accept? (diagnostic, not built by CMake)
// nvcc -o probe cufft_lto_probe.cu -lcufft; ./probe FATBIN SYMBOL TYPE(ldr|ldc|str) N BATCH [many64]
#include <cufftXt.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <fstream>
#include <iterator>
int main(int argc, char** argv) {
  std::ifstream f(argv[1], std::ios::binary);
  std::vector<char> fb((std::istreambuf_iterator<char>(f)), {});
  const char* sym = argv[2];
  std::string ty = argv[3];
  long long n = atoll(argv[4]), batch = atoll(argv[5]);
  bool many64 = argc > 6;
  cufftXtCallbackType t = ty == "ldr" ? CUFFT_CB_LD_REAL : ty == "ldc" ? CUFFT_CB_LD_COMPLEX : CUFFT_CB_ST_REAL;
  cufftType ft = (ty == "ldr") ? CUFFT_R2C : CUFFT_C2R;
  cufftHandle h;
  cufftCreate(&h);
  void* info = nullptr;
  cudaMalloc(&info, 4096);
  void* infos[1] = {info};
  cufftResult r1 = cufftXtSetJITCallback(h, sym, fb.data(), fb.size(), t, infos);
  size_t work = 0;
  cufftResult r2;
  if (many64) {
    long long nn[1] = {n}, re[1] = {n}, ce[1] = {n / 2 + 1};
    bool r2c = ft == CUFFT_R2C;
    r2 = cufftMakePlanMany64(h, 1, nn, r2c ? re : ce, 1, r2c ? n : n / 2 + 1, r2c ? ce : re, 1, r2c ? n / 2 + 1 : n, ft, batch, &work);
  } else {
    r2 = cufftMakePlan1d(h, int(n), ft, int(batch), &work);
  }
  printf("%s %s n=%lld batch=%lld many64=%d: set=%d make=%d work=%zu fatbin=%zu\n", sym, ty.c_str(), n, batch, int(many64), int(r1), int(r2), work, fb.size());
  return 0;
}
