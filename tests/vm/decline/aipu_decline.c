// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

/*
 * aipu_decline: a test module for aipu's t_redirty, not part of aipu.
 *
 * Makes the kernel decline the writeback of one page, the way it does when
 * something else holds one of the page's buffers: it locks every buffer of
 * page @index of the file or block device @path for @hold_ms, then lets go.
 * WB_SYNC_NONE writeback of a buffer-head mapping (block_write_full_page())
 * only trylocks buffers and calls folio_redirty_for_writepage() on the page
 * when it cannot, the path every ->writepage that declines a page takes.
 *
 *   insmod aipu_decline.ko path=/dev/nullb0 index=2048 hold_ms=1500
 *   echo 1 > /sys/module/aipu_decline/parameters/release  # let go now
 *
 * insmod returns once the buffers are locked; the page must be cached with
 * buffers (written through the page cache), else insmod fails with ENOENT.
 * A write to @release lets go at once and returns when the buffers are
 * unlocked, so a test can put a marker I/O right before and after it
 * (rmmod may take seconds in a busy guest).
 */
#include <linux/buffer_head.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/pagemap.h>
#include <linux/workqueue.h>

static char *path;
module_param(path, charp, 0444);
MODULE_PARM_DESC(path, "file or block device whose page to hold");
static unsigned long index;
module_param(index, ulong, 0444);
MODULE_PARM_DESC(index, "page index in it");
static unsigned int hold_ms = 1000;
module_param(hold_ms, uint, 0444);
MODULE_PARM_DESC(hold_ms, "how long to hold the page's buffers locked");

static struct file *filp;
static struct folio *folio;
static bool held;
static void release_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(release_work, release_fn);

static void release_fn(struct work_struct *work)
{
	struct buffer_head *head, *bh;

	/* Released already (timer, or @release), or not held yet. */
	if (!held)
		return;
	head = folio_buffers(folio);
	bh = head;
	do {
		unlock_buffer(bh);
		bh = bh->b_this_page;
	} while (bh != head);
	held = false;
	pr_info("released page %lu of %s\n", index, path);
}

static int release_set(const char *val, const struct kernel_param *kp)
{
	mod_delayed_work(system_wq, &release_work, 0);
	flush_delayed_work(&release_work);
	return 0;
}

static const struct kernel_param_ops release_ops = {
	.set = release_set,
};
module_param_cb(release, &release_ops, NULL, 0200);
MODULE_PARM_DESC(release, "write anything: unlock the buffers now");

static int __init decline_init(void)
{
	struct buffer_head *head, *bh;

	if (!path)
		return -EINVAL;
	filp = filp_open(path, O_RDONLY, 0);
	if (IS_ERR(filp))
		return PTR_ERR(filp);
	/* NULL on 6.1, an error pointer since 6.3, when not cached. */
	folio = filemap_get_folio(filp->f_mapping, index);
	if (IS_ERR_OR_NULL(folio) || !folio_buffers(folio)) {
		if (!IS_ERR_OR_NULL(folio))
			folio_put(folio);
		filp_close(filp, NULL);
		return -ENOENT;
	}
	head = folio_buffers(folio);
	bh = head;
	do {
		lock_buffer(bh);
		bh = bh->b_this_page;
	} while (bh != head);
	held = true;
	pr_info("holding page %lu of %s (dirty %d) for %u ms\n", index, path,
		folio_test_dirty(folio), hold_ms);
	schedule_delayed_work(&release_work, msecs_to_jiffies(hold_ms));
	return 0;
}

static void __exit decline_exit(void)
{
	cancel_delayed_work_sync(&release_work);
	if (held)
		release_fn(&release_work.work);
	folio_put(folio);
	filp_close(filp, NULL);
}

module_init(decline_init);
module_exit(decline_exit);

MODULE_DESCRIPTION("aipu test: hold a page's buffers locked so its writeback is declined");
MODULE_LICENSE("GPL");
