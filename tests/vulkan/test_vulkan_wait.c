/*
 * How a Vulkan call waits for its fence (vk_wait_fence, vk_wait_spins), against a fake
 * driver's entry points: polling returns only once the fence signals, or with the error of
 * a lost device; the blocking wait is one driver call; either way the fence is reset once. Lavapipe cannot show an early return
 * (its submissions complete before vkQueueSubmit returns).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "backends/vulkan/vk_common.h"

static int polls, not_ready_polls, blocking_waits, resets;
static VkResult after; /* what the poll answers once not_ready_polls have passed */

static VKAPI_ATTR VkResult VKAPI_CALL fake_status(VkDevice d, VkFence f)
{
    (void)d, (void)f;
    return ++polls <= not_ready_polls ? VK_NOT_READY : after;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_wait(VkDevice d, uint32_t n, const VkFence *f, VkBool32 all, uint64_t t)
{
    (void)d, (void)n, (void)f, (void)all, (void)t;
    blocking_waits++;
    return VK_SUCCESS;
}

static VKAPI_ATTR VkResult VKAPI_CALL fake_reset(VkDevice d, uint32_t n, const VkFence *f)
{
    (void)d, (void)n, (void)f;
    resets++;
    return VK_SUCCESS;
}

static vk_device *fake_device(int spin)
{
    static vk_device dev;
    memset(&dev, 0, sizeof dev);
    dev.spin_wait = spin;
    vkGetFenceStatus = fake_status;
    vkWaitForFences = fake_wait;
    vkResetFences = fake_reset;
    polls = blocking_waits = resets = 0;
    return &dev;
}

static void test_poll_until_signalled(void **state)
{
    (void)state;
    vk_device *dev = fake_device(1);
    not_ready_polls = 1000, after = VK_SUCCESS;
    assert_int_equal(vk_wait_fence(dev), VK_SUCCESS);
    assert_int_equal(polls, 1001);
    assert_int_equal(blocking_waits, 0);
    assert_int_equal(resets, 1);
}

static void test_poll_device_lost(void **state)
{
    (void)state;
    vk_device *dev = fake_device(1);
    not_ready_polls = 3, after = VK_ERROR_DEVICE_LOST;
    assert_int_equal(vk_wait_fence(dev), VK_ERROR_DEVICE_LOST);
    assert_int_equal(polls, 4);
    assert_int_equal(resets, 1);
}

static void test_blocking_wait(void **state)
{
    (void)state;
    vk_device *dev = fake_device(0);
    not_ready_polls = 5, after = VK_SUCCESS;
    assert_int_equal(vk_wait_fence(dev), VK_SUCCESS);
    assert_int_equal(blocking_waits, 1);
    assert_int_equal(polls, 0);
    assert_int_equal(resets, 1);
}

static void test_policy(void **state)
{
    (void)state;
    assert_int_equal(vk_wait_spins(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, NULL), 1);
    assert_int_equal(vk_wait_spins(VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, NULL), 1);
    assert_int_equal(vk_wait_spins(VK_PHYSICAL_DEVICE_TYPE_CPU, NULL), 0);
    assert_int_equal(vk_wait_spins(VK_PHYSICAL_DEVICE_TYPE_CPU, "spin"), 1);
    assert_int_equal(vk_wait_spins(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, "block"), 0);
    assert_int_equal(vk_wait_spins(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, "fast"), 1); /* warned, default */
    assert_int_equal(vk_wait_spins(VK_PHYSICAL_DEVICE_TYPE_CPU, "fast"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_poll_until_signalled),
        cmocka_unit_test(test_poll_device_lost),
        cmocka_unit_test(test_blocking_wait),
        cmocka_unit_test(test_policy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
