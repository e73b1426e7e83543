import type { RouteDef } from '../route.js';
import { accountRoutes } from './account.routes.js';
import { authRoutes } from './auth.routes.js';

/** Every versioned route of the REST face, area by area. */
export const API_ROUTES: RouteDef[] = [...authRoutes, ...accountRoutes];
