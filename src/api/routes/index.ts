import type { RouteDef } from '../route.js';
import { accountRoutes } from './account.routes.js';
import { accountSettingsRoutes } from './account-settings.routes.js';
import { authRoutes } from './auth.routes.js';
import { appApiRoutes } from './app.routes.js';
import { employeesRoutes } from './employees.routes.js';
import { pluginsRoutes } from './plugins.routes.js';
import { statusesRoutes } from './statuses.routes.js';
import { templatesRoutes } from './templates.routes.js';
import { tagsRoutes } from './tags.routes.js';
import { paymentTypesRoutes } from './payment-types.routes.js';
import { integrationRoutes } from './integrations.routes.js';
import { customerRoutes } from './customers.routes.js';
import { messagingRoutes } from './messaging.routes.js';
import { webhooksRoutes } from './webhooks.routes.js';
import { searchRoutes } from './search.routes.js';
import { leadsRoutes } from './leads.routes.js';
import { leadTagsRoutes } from './lead-tags.routes.js';
import { leadNotesRoutes } from './lead-notes.routes.js';
import { uploadRoutes } from './upload.routes.js';
import { widgetRoutes } from './widget.routes.js';
import { bridgeAdminRoutes } from './bridge-admin.routes.js';
import { oauthRoutes } from './oauth.routes.js';
import { devicesRoutes } from './devices.routes.js';
import { dataOwnershipRoutes } from './data-ownership.routes.js';
import { automationRoutes } from './automation.routes.js';

/** Every versioned route of the REST face, area by area. */
export const API_ROUTES: RouteDef[] = [
  ...authRoutes,
  ...appApiRoutes,
  ...accountRoutes,
  ...accountSettingsRoutes,
  ...employeesRoutes,
  ...pluginsRoutes,
  ...statusesRoutes,
  ...templatesRoutes,
  ...tagsRoutes,
  ...paymentTypesRoutes,
  ...integrationRoutes,
  ...customerRoutes,
  ...messagingRoutes,
  ...webhooksRoutes,
  ...searchRoutes,
  ...leadsRoutes,
  ...leadTagsRoutes,
  ...leadNotesRoutes,
  ...uploadRoutes,
  ...widgetRoutes,
  ...bridgeAdminRoutes,
  ...oauthRoutes,
  ...devicesRoutes,
  ...dataOwnershipRoutes,
  ...automationRoutes,
];
