/* The C API with "cpu" loads no GPU runtime: run with the aborting fakes of
 * fake_abort.c on LD_LIBRARY_PATH (and MXA_HIP_LIBRARY), so loading any of
 * them would abort this test. */
#include <stdio.h>
#include <string.h>

#include "mxa/mxa.h"

int main(void)
{
    static float q[2 * 64 * 64], k[2 * 64 * 64], v[2 * 64 * 64], o[2 * 64 * 64];
    for (int i = 0; i < 2 * 64 * 64; i++) {
        q[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
        k[i] = (float)((i * 53) % 97) / 48.0f - 1.0f;
        v[i] = (float)((i * 29) % 89) / 44.0f - 1.0f;
    }
    mxa_runtime *rt = NULL;
    mxa_device *dev = NULL;
    mxa_tensor tq, tk, tv, to;
    mxa_attention_desc desc;
    mxa_tensor_init(&tq, MXA_F32, 1, 2, 64, 64, q);
    mxa_tensor_init(&tk, MXA_F32, 1, 2, 64, 64, k);
    mxa_tensor_init(&tv, MXA_F32, 1, 2, 64, 64, v);
    mxa_tensor_init(&to, MXA_F32, 1, 2, 64, 64, o);
    mxa_attention_desc_init(&desc, MXA_RECIPE_MXATTENTION);
    if (mxa_runtime_create(NULL, &rt) || mxa_device_open(rt, "cpu", &dev) ||
        mxa_attention(dev, &desc, &tq, &tk, &tv, &to, NULL, NULL)) {
        fprintf(stderr, "cpu_only: %s\n", mxa_last_error_message());
        return 1;
    }
    mxa_device_close(dev);
    mxa_runtime_destroy(rt);
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[4096];
    int loaded = 0;
    while (maps && fgets(line, sizeof line, maps))
        loaded |= strstr(line, "libvulkan") || strstr(line, "libOpenCL") || strstr(line, "libamdhip64");
    if (maps) fclose(maps);
    if (loaded) {
        fprintf(stderr, "cpu_only: a GPU runtime was mapped into a process that only used \"cpu\"\n");
        return 1;
    }
    printf("cpu_only: attention on cpu, no GPU runtime loaded\n");
    return 0;
}
