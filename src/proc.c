// SPDX-License-Identifier: GPL-2.0
/*
 * aipu: /proc as the initial namespaces see it.  aipu reads Linux's
 * writeback sysctls (lazytime.c) and lists the file system types
 * (handover.c) for the whole machine, whoever wrote the knob that made it
 * look.
 */
#include <linux/fs.h>
#include <linux/fs_struct.h>
#include <linux/path.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/sched/task.h>

#include "aipu.h"

/*
 * A /proc file (@path: "proc/sys/...", "proc/filesystems") as the initial
 * namespaces see it, from the root of the initial pid namespace's init, not from the root of
 * whoever wrote a knob: a writer in a container with its own /proc (or a
 * file bound over the sysctl) must not make aipu change some other file.
 */
struct file *aipu_proc_open(const char *path, int flags)
{
	struct task_struct *init;
	struct file *f = ERR_PTR(-ESRCH);
	struct path root;

	rcu_read_lock();
	init = pid_task(find_pid_ns(1, &init_pid_ns), PIDTYPE_PID);
	if (init)
		get_task_struct(init);
	rcu_read_unlock();
	if (!init)
		return f;
	task_lock(init);
	if (init->fs) {
		get_fs_root(init->fs, &root);
		task_unlock(init);
		f = file_open_root(&root, path, flags, 0);
		path_put(&root);
	} else {
		task_unlock(init);
	}
	put_task_struct(init);
	return f;
}

/* Read @path (as above) into @buf, NUL-terminated; bytes read or -errno. */
ssize_t aipu_proc_read(const char *path, char *buf, size_t size)
{
	struct file *f = aipu_proc_open(path, O_RDONLY);
	loff_t pos = 0;
	ssize_t n;

	if (IS_ERR(f))
		return PTR_ERR(f);
	n = kernel_read(f, buf, size - 1, &pos);
	filp_close(f, NULL);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}
