import type { AuthContext } from '../auth/auth-context.js';
import type { Deps } from '../context.js';
import * as repo from './tags.repo.js';
import { compareTags, tagKey, type TagRow } from './tags.types.js';

/** Tags of the account (docs/api/leads.md). Attaching tags to leads lives with the leads. */
export class TagsService {
  constructor(private readonly deps: Deps) {}

  /** Tags starting with `search`, without case (surrounding spaces ignored); all when it is absent or blank. */
  async search(auth: AuthContext, search?: string): Promise<TagRow[]> {
    const prefix = search?.trim() ? tagKey(search.trim()) : undefined;
    const rows = await repo.searchTags(this.deps.db.kysely, auth.accountId, prefix);
    return rows.sort(compareTags);
  }
}
