/* The driver layer: crec never links libcuda, finds it at run time, and
 * reports a machine without a driver or device cleanly. The same tests run on
 * a GPU machine, where they check the opposite. */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "common.h"

TestSuite(device, .fini = crec_test_leak_check);

/* Whether libcuda.so.1 can be opened at all, found without crec's help. */
static bool driver_present(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return false;
  dlclose(h);
  return true;
}

static int find_libcuda(struct dl_phdr_info *info, size_t size, void *found) {
  (void)size;
  if (info->dlpi_name && strstr(info->dlpi_name, "libcuda.so")) *(bool *)found = true;
  return 0;
}

static bool libcuda_loaded(void) {
  bool found = false;
  dl_iterate_phdr(find_libcuda, &found);
  return found;
}

Test(device, libcuda_is_not_linked) {
  /* a linked driver would be loaded before main, and a machine without one could not
   * even start this test */
  cr_assert(!libcuda_loaded(), "libcuda is loaded before any crec call: something links it");
  crec_device_available();
  cr_assert_eq(libcuda_loaded(), driver_present(), "after the first call libcuda is %s, but it is %s",
               libcuda_loaded() ? "loaded" : "not loaded", driver_present() ? "installed" : "missing");
}

Test(device, availability_says_why_not) {
  int available = crec_device_available();
  cr_assert(available == 0 || available == 1, "crec_device_available returned %d", available);
  if (!driver_present()) {
    cr_assert_eq(available, 0, "no libcuda.so.1 here, but a device is reported available");
    EXPECT_ERROR_MENTIONS("crec_device_available: ");
    EXPECT_ERROR_MENTIONS("libcuda.so.1");
  } else if (!available) {
    EXPECT_ERROR_MENTIONS("crec_device_available: ");
    EXPECT_ERROR_MENTIONS("no CUDA device");
  } else {
    int count = 0;
    EXPECT_OK(crec_device_count(&count));
    cr_assert_geq(count, 1);
  }
  /* the answer does not change */
  for (int i = 0; i < 3; i++) cr_assert_eq(crec_device_available(), available);
}

Test(device, count_without_a_device_is_no_device) {
  int available = crec_device_available();
  int count = -1;
  crec_status s = crec_device_count(&count);
  if (available) {
    cr_assert_eq(s, CREC_OK, "%s", crec_last_error());
    cr_assert_geq(count, 1);
  } else {
    cr_assert_eq(s, CREC_ERR_NO_DEVICE, "crec_device_count gave %s: %s", crec_status_name(s), crec_last_error());
    cr_assert_eq(count, 0, "the count is %d without a device", count);
    EXPECT_ERROR_MENTIONS("crec_device_count: ");
    EXPECT_ERROR_MENTIONS(driver_present() ? "no CUDA device" : "libcuda.so.1");
  }
  EXPECT_STATUS(crec_device_count(NULL), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("'count'");
}

Test(device, driver_version_and_description) {
  int available = crec_device_available();
  int version = -1, major = -1, minor = -1;
  char name[128] = "untouched";
  crec_status sv = crec_driver_version(&version);
  crec_status sd = crec_device_describe(0, name, sizeof name, &major, &minor);
  if (available) {
    cr_assert_eq(sv, CREC_OK, "%s", crec_last_error());
    cr_assert_geq(version, 12000, "driver version %d", version);
    cr_assert_eq(sd, CREC_OK, "%s", crec_last_error());
    cr_assert_neq(name[0], '\0');
    cr_assert_geq(major, 3);
    EXPECT_STATUS(crec_device_describe(-1, name, sizeof name, &major, &minor), CREC_ERR_OUT_OF_RANGE);
    EXPECT_ERROR_MENTIONS("'ordinal'");
  } else {
    cr_assert_eq(sv, CREC_ERR_NO_DEVICE);
    cr_assert_eq(version, 0);
    cr_assert_eq(sd, CREC_ERR_NO_DEVICE);
    EXPECT_ERROR_MENTIONS("crec_device_describe: ");
    cr_assert_str_eq(name, "");
    cr_assert(major == 0 && minor == 0);
  }
  EXPECT_STATUS(crec_driver_version(NULL), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_device_describe(0, NULL, 0, &major, &minor), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("'name'");
  EXPECT_STATUS(crec_device_describe(0, name, sizeof name, &major, NULL), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("'minor'");
  cr_assert_eq(crec_debug_live_objects(), 0);
}
